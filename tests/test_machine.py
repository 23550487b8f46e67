"""The machine description: CPU model, cores and caches read from /proc and /sys."""

from jaxlean._machine import Machine, parse_cache_size, read_machine, this_machine
from jaxlean.bench._registry import BenchContext, Benchmark, BenchResult
from jaxlean.bench._report import markdown


def test_cache_sizes_in_the_kernels_and_lscpus_spellings():
    assert parse_cache_size("1024K\n") == 2**20
    assert parse_cache_size("32 MiB") == 32 * 2**20
    assert parse_cache_size("512") == 512
    assert parse_cache_size("lots") is None


def test_read_machine_from_cpuinfo_and_sysfs(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU 9000\n")
    caches = tmp_path / "cache"
    for index, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"),
                                                 (2, "Unified", "1024K"),
                                                 (3, "Unified", "32768K")]):
        folder = caches / f"index{index}"
        folder.mkdir(parents=True)
        (folder / "level").write_text(f"{level}\n")
        (folder / "type").write_text(f"{kind}\n")
        (folder / "size").write_text(f"{size}\n")
    machine = read_machine(cpuinfo, caches)
    assert (machine.cpu, machine.l2_bytes, machine.l3_bytes) == ("Test CPU 9000", 2**20, 2**25)
    assert machine.cores >= 1
    assert machine.describe().startswith("Test CPU 9000, ")
    assert "L2 1 MiB/core, L3 32 MiB" in machine.describe()
    bare = read_machine(tmp_path / "absent", tmp_path / "absent")
    assert bare.l2_bytes is None and bare.cpu


def test_every_benchmark_result_records_its_cpu_and_load():
    bench = Benchmark("demo", "demo", lambda ctx: BenchResult("demo", "a demo"))
    result = bench.measure(BenchContext())
    assert Machine(**result.machine) == this_machine()
    text = markdown([result], "jaxlean bench demo")
    assert f"Measured on {this_machine().cpu} ({this_machine().cores} cores)" in text
    assert this_machine().describe() in text
