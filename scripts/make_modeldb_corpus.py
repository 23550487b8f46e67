"""Copy the ModelDB corpus's ``.mod`` files into tests/models/neuron/nmodl/corpus/.

Each model of :data:`MODELS` is the GitHub repository ``ModelDBRepository/<id>`` (ModelDB's
own mirror), read from a local git directory (``--mirror DIR``:
``DIR/ModelDBRepository+<id>/repo``). Every ``.mod`` file is copied to
``corpus/<id>/<path in the repository>`` unless a file with the same bytes was already
copied (from an earlier model or folder), at most :data:`PER_MODEL` of each model (the
first in path order; the corpus's NEURON fixture must stay cheap to make and to check),
with the files they ``INCLUDE``; each model's
``SOURCES.md`` names the repository, commit, paper and each file's sha256.

    python scripts/make_modeldb_corpus.py --mirror DIR
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "models" / "neuron" / "nmodl" / "corpus"
MODELS = {
    "2488": "Mainen ZF, Sejnowski TJ (1996) Influence of dendritic structure on firing "
            "pattern in model neocortical neurons. Nature 382:363-366",
    "3263": "Migliore M, Cook EP, Jaffe DB, Turner DA, Johnston D (1995) Computer simulations "
            "of morphologically reconstructed CA3 hippocampal neurons. J Neurophysiol "
            "73:1157-1168",
    "37819": "Bazhenov M, Timofeev I, Steriade M, Sejnowski TJ (1998) Computational models "
             "of thalamocortical augmenting responses. J Neurosci 18:6444-6465",
    "53451": "Hines ML, Carnevale NT (2001) NEURON: a tool for neuroscientists. The "
             "Neuroscientist 7:123-135",
    "84589": "Gold C, Henze DA, Koch C (2007) Using extracellular action potential "
             "recordings to constrain compartmental models. J Comput Neurosci 23:39-58",
    "98017": "Edin F, Macoveanu J, Olesen P, Tegner J, Klingberg T (2007) Stronger synaptic "
             "connectivity as a mechanism behind development of working memory-related "
             "brain activity during childhood. J Cogn Neurosci 19:750-760",
    "113435": "Golomb D et al. (2007) Mechanisms of firing patterns in fast-spiking cortical "
              "interneurons. PLoS Comput Biol 3:e156 (NEURON version by Carnevale NT, "
              "Yamini V)",
    "113732": "Jones SR, Pritchett DL, Stufflebeam SM, Hamalainen M, Moore CI (2007) Neural "
              "correlates of tactile detection: a combined MEG and biophysically based "
              "computational modeling study. J Neurosci 27:10751-10764",
    "115356": "Royeck M, Horstmann MT, Remy S, Reitze M, Yaari Y, Beck H (2008) Role of "
              "axonal NaV1.6 sodium channels in action potential initiation of CA1 "
              "pyramidal neurons. J Neurophysiol 100:2361-2380",
    "116096": "Badoual M, Zou Q, Davison AP, Rudolph M, Bal T, Fregnac Y, Destexhe A (2006) "
              "Biophysical and phenomenological models of multiple spike interactions in "
              "spike-timing dependent plasticity. Int J Neural Syst 16:79-97",
    "123815": "Cutsuridis V, Cobb S, Graham BP (2010) Encoding and retrieval in a model of "
              "the hippocampal CA1 microcircuit. Hippocampus 20:423-446",
    "139653": "Hay E, Hill S, Schurmann F, Markram H, Segev I (2011) Models of neocortical "
              "layer 5b pyramidal cells capturing a wide range of dendritic and perisomatic "
              "active properties. PLoS Comput Biol 7:e1002107",
    "144007": "Jones PW, Gabbiani F (2012) Logarithmic compression of sensory signals within "
              "the dendritic tree of a collision-sensitive neuron. J Neurosci 32:4923-4934",
    "148094": "Miceli F et al. (2013) Genotype-phenotype correlations in neonatal epilepsies "
              "caused by mutations in the voltage sensor of Kv7.2 potassium channel "
              "subunits. PNAS 110:4386-4391",
    "168148": "Reetz O et al. (2014) Protein kinase C activation mediates interferon-beta-"
              "induced neuronal excitability changes in neocortical pyramidal neurons. "
              "J Neuroinflammation 11:185",
    "181967": "Cutsuridis V, Poirazi P (2015) A computational study on how theta modulated "
              "inhibition can account for the long temporal windows in the "
              "entorhinal-hippocampal loop. Neurobiol Learn Mem 120:69-83",
    "231862": "Beining M, Mongiat LA, Schwarzacher SW, Cuntz H, Jedlicka P (2017) T2N as a "
              "new tool for robust electrophysiological modeling demonstrated for mature "
              "and adult-born dentate granule cells. eLife 6:e26517",
    "244416": "Combe CL, Canavier CC, Gasparini S (2018) Intrinsic mechanisms of frequency "
              "selectivity in the proximal dendrites of CA1 pyramidal neurons. J Neurosci "
              "38:8110-8127",
    "244688": "Migliore R, Lupascu CA, ..., Markram H, Migliore M (2018) The physiological "
              "variability of channel density in hippocampal CA1 pyramidal cells and "
              "interneurons explored using a unified data-driven modeling workflow. PLoS "
              "Comput Biol 14:e1006423",
    "249463": "Maki-Marttunen T, Devor A, Phillips WA, Dale AM, Andreassen OA, Einevoll GT "
              "(2019) Computational modeling of genetic contributions to excitability and "
              "neural coding in layer V pyramidal cells: applications to schizophrenia "
              "pathology. Front Comput Neurosci 13:66",
    "266850": "Barkai O, Butterman R, Katz B, Lev S, Binshtok AM (2020) The input-output "
              "relation of primary nociceptive neurons is determined by the morphology of "
              "the peripheral nociceptive terminals. J Neurosci 40:9346-9363",
    "266900": "(paper: see the repository's readme2.htm)",
    "267221": "Bilash OM et al. (2023) Lateral entorhinal cortex inputs modulate hippocampal "
              "dendritic excitability by recruiting a local disinhibitory microcircuit. "
              "Cell Rep 42:111962",
    "267355": "Filipis L, Blomer LA, Montnach J, De Waard M, Canepari M (2023) Nav1.2 and BK "
              "channels interaction shapes the action potential in the axon initial "
              "segment. J Physiol 601:1957-1979",
    "267499": "(paper: see the repository; ion-concentration model with pumps and "
              "cotransporters)",
    "267599": "Combe CL, Upchurch CM, Canavier CC, Gasparini S (2022) Cholinergic "
              "modulation shifts the response of CA1 pyramidal cells to depolarizing ramps "
              "via TRPM4 channels with implications for place field firing",
    "2015953": "Hariani HN et al. (2023) Unipolar brush cell circuits extend and diversify "
               "spiking patterns",
}
"""ModelDB id: paper."""
PER_MODEL = 6


def git_dir(mirror: Path, model: str) -> Path:
    base = mirror / f"ModelDBRepository+{model}" / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def git(directory: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(directory), *args], check=True,
                          capture_output=True).stdout


def includes(text: str) -> list[str]:
    """The file names a .mod file INCLUDEs."""
    return re.findall(r'^\s*INCLUDE\s+"([^"]+)"', text, flags=re.M)


def main(mirror: Path) -> None:
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    seen: dict[str, str] = {}
    total = 0
    for model, paper in MODELS.items():
        directory = git_dir(mirror, model)
        commit = git(directory, "rev-parse", "HEAD").decode().strip()
        paths = git(directory, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
        rows, duplicates, left, rows_of = [], [], [], []
        for path in sorted(p for p in paths if p.lower().endswith(".mod")):
            data = git(directory, "show", f"{commit}:{path}")
            digest = hashlib.sha256(data).hexdigest()
            if digest not in seen and len(rows_of) >= PER_MODEL:
                left.append(f"- `{path}`")
                continue
            if digest in seen:
                duplicates.append(f"- `{path}`: same bytes as `{seen[digest]}`")
                continue
            seen[digest] = f"{model}/{path}"
            wanted = [(path, data, digest)]
            for name in includes(data.decode("latin-1")):
                other = str(Path(path).parent / name) if "/" in path else name
                if other in paths:
                    extra = git(directory, "show", f"{commit}:{other}")
                    wanted.append((other, extra, hashlib.sha256(extra).hexdigest()))
            for name, content, sha in wanted:
                target = CORPUS / model / name
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.exists():
                    target.write_bytes(content)
                    rows.append(f"| `{name}` | `{sha}` |")
            rows_of.append(path)
            total += 1
        lines = [f"# ModelDB {model}", "", f"- Paper: {paper}",
                 f"- Repository: https://github.com/ModelDBRepository/{model}",
                 f"- Commit: `{commit}`",
                 f"- ModelDB: https://modeldb.science/{model}", "",
                 "Files copied unedited (path in the repository, sha256):", "",
                 "| file | sha256 |", "| --- | --- |", *rows]
        if duplicates:
            lines += ["", "Not copied again (identical to a file already in the corpus):",
                      "", *duplicates]
        if left:
            lines += ["", f"Not copied (beyond the first {PER_MODEL} of this model):", "",
                      *left]
        if rows:
            (CORPUS / model / "SOURCES.md").write_text("\n".join(lines) + "\n")
    print(f"{total} .mod files of {len(MODELS)} models in {CORPUS}")


if __name__ == "__main__":
    options = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
    main(Path(options["--mirror"]))
