"""Record the seed C++ SimHash program's fingerprints of generated lines, as test references.

The program is not copied into this repository: this script takes its source from the
shared seed file, replaces its demonstration ``main`` with one that reads lines from
standard input, compiles it with g++ (at -O0 and -O2, which must agree), checks that it
reproduces the ten published vectors, and writes the fingerprints of generated lines to
``tests/compat/seed_murmur_reference.json``:

    python tests/compat/make_seed_murmur_reference.py

The lines cover what the ten vectors do not: every tail length of both hashes, long and
empty tokens, repeated tokens, every odd weight form that ``atof`` reads (trailing junk,
hexadecimal, exponents without digits, inf, nan, extra ``^`` pieces) and weights whose
floating-point sums depend on the order of addition. Lines on which the program is
undefined (empty items, items without ``^``, overflowing weights) are not generated.
Needs only the standard library and g++.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
SEED_PROGRAM = SHARED / "seeds" / "000_76ab7631c26ad3b9.txt"
PUBLISHED_VECTORS = SHARED / "compat" / "seed-murmur-vectors.json"
WIKI = SHARED / "corpus" / "zh-wiki" / "cmrc2018-contexts.jsonl"
OUTPUT = Path(__file__).with_name("seed_murmur_reference.json")

# Replaces the program's main. Records are "<byte length>\n<bytes>", so that a line may hold
# any byte, newlines and NUL included.
DRIVER = r"""
int main() {
  std::size_t length;
  while (std::cin >> length) {
    std::cin.get();
    std::string line(length, '\0');
    std::cin.read(&line[0], length);
    std::cout << Binary32(SimHash32(line)) << ' ' << Binary64(SimHash64(line)) << '\n';
  }
  return 0;
}
"""


def program_source() -> str:
    """The seed program's functions (everything from its first #include up to its main)."""
    text = SEED_PROGRAM.read_text(encoding="utf-8")
    start = text.index("# include  <iostream>")
    end = text.index("int main() {")
    return "#include <cstdint>\n" + text[start:end] + DRIVER


def compile_program(workdir: Path, optimisation: str) -> Path:
    source = workdir / "seed_simhash.cpp"
    source.write_text(program_source(), encoding="utf-8")
    binary = workdir / f"seed_simhash{optimisation}"
    subprocess.run(["g++", optimisation, "-std=gnu++17", "-w", str(source), "-o", str(binary)], check=True)
    return binary


def run_program(binary: Path, lines: list[str]) -> list[tuple[str, str]]:
    records = b"".join(b"%d\n" % len(encoded) + encoded for encoded in (line.encode("utf-8") for line in lines))
    output = subprocess.run([str(binary)], input=records, capture_output=True, check=True).stdout
    results = [tuple(row.split(" ")) for row in output.decode("ascii").splitlines()]
    if len(results) != len(lines):
        raise SystemExit(f"the program answered {len(results)} of {len(lines)} lines")
    return results  # type: ignore[return-value]


# Weight forms that atof reads in its own way: trailing junk, no digits, hexadecimal, specials.
ODD_WEIGHTS = [
    "2x",
    "x",
    "",
    "1e",
    "1e+",
    "1.5e+2",
    ".5",
    "+.5",
    "-1",
    "-0",
    "0x10",
    "0x1.8p1",
    "0X.8P-1",
    "0x",
    "0x1p",
    "inf",
    "-inf",
    "INFINITY",
    "nan",
    "nan(42)",
    "-nan",
    "\t3",
    "\n2",
    "1e-320",
    "4.9e-324",
    "1_000",
    "１２",
    "3,5",
    "1e308",
]
# Weights whose sums round differently depending on the order of addition.
INEXACT_WEIGHTS = ["0.1", "0.2", "0.3", "-0.3", "0.7", "1.1", "1e16", "-1e16", "1", "3", "1e-17", "2.675"]


def generated_lines(rng: random.Random) -> list[str]:
    paragraphs = [json.loads(line)["text"] for line in WIKI.read_text(encoding="utf-8").splitlines()[:200]]

    def chinese_token() -> str:
        text = rng.choice(paragraphs)
        start = rng.randrange(len(text))
        return text[start : start + rng.randint(1, 6)].replace(" ", "").replace("^", "")

    def ascii_token(length: int) -> str:
        return "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") for _ in range(length)
        )

    def dyadic_weight() -> str:
        return rng.choice(["1", "2", "3", "1.5", "2.5", "3.25", "4", "5.5", "10", "0.75"])

    lines: list[str] = []
    # Every tail length of the 4- and 8-byte word loops, one token per line and many per line.
    for length in range(0, 33):
        lines.append(f"{ascii_token(length)}^{dyadic_weight()}")
    for _ in range(20):
        lines.append(
            " ".join(f"{ascii_token(rng.randint(0, 40))}^{dyadic_weight()}" for _ in range(rng.randint(1, 30)))
        )
    # Chinese tokens as a segmenter would give them, with the weights of the published vectors.
    for _ in range(60):
        lines.append(" ".join(f"{chinese_token()}^{dyadic_weight()}" for _ in range(rng.randint(1, 80))))
    # Repeated tokens, empty tokens ("^2"), extra "^" pieces, NUL and other bytes inside tokens.
    for _ in range(20):
        items = [f"{chinese_token()}^{dyadic_weight()}" for _ in range(rng.randint(1, 10))]
        items += [rng.choice(items) for _ in range(rng.randint(1, 10))]
        items += [f"^{dyadic_weight()}", f"{chinese_token()}^{dyadic_weight()}^7", "a\tb\x00c^1", "😀🇨🇳^2"]
        rng.shuffle(items)
        lines.append(" ".join(items))
    # Every odd weight form, alone and among ordinary items.
    for weight in ODD_WEIGHTS:
        lines.append(f"{chinese_token()}^{weight}")
        lines.append(
            " ".join([f"{chinese_token()}^{dyadic_weight()}" for _ in range(5)] + [f"{chinese_token()}^{weight}"])
        )
    lines.append("a^inf b^-inf c^1")
    lines.append("a^nan b^1 c^2")
    lines.append("a^1e308 b^1e308 c^1e308 d^-1e308")
    # Sums that cancel up to rounding: the order of addition decides the sign.
    lines.append("a^0.1 a^0.2 a^-0.3")
    lines.append("a^-0.3 a^0.1 a^0.2")
    lines.append("a^1e16 b^1 a^-1e16")
    lines.append("x^0.1 y^0.2 z^0.3 x^0.7 y^-1.1 z^0.1 x^-0.1")
    for _ in range(60):
        tokens = [chinese_token() for _ in range(rng.randint(1, 4))]
        lines.append(" ".join(f"{rng.choice(tokens)}^{rng.choice(INEXACT_WEIGHTS)}" for _ in range(rng.randint(2, 12))))
    return lines


def main() -> None:
    published = json.loads(PUBLISHED_VECTORS.read_text(encoding="utf-8"))
    lines = generated_lines(random.Random(20240607))
    with tempfile.TemporaryDirectory() as workdir:
        unoptimised = compile_program(Path(workdir), "-O0")
        optimised = compile_program(Path(workdir), "-O2")
        for vector, (bits32, bits64) in zip(published, run_program(optimised, [v["input"] for v in published])):
            if (bits32, bits64) != (vector["simhash32"], vector["simhash64"]):
                raise SystemExit(
                    f"the compiled program does not reproduce the published vector {vector['input'][:30]!r}"
                )
        results = run_program(optimised, lines)
        if results != run_program(unoptimised, lines):
            raise SystemExit("the program gives different fingerprints at -O0 and -O2")
        compiler = subprocess.run(["g++", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[
            0
        ]
    reference = {
        "about": "Fingerprints of the seed C++ SimHash program, compiled from "
        f"{SEED_PROGRAM.relative_to(SHARED.parent)} with {compiler} (x86-64, -O2; -O0 agrees); "
        "made by tests/compat/make_seed_murmur_reference.py. Bit strings are most significant bit first.",
        "cases": [
            {"input": line, "simhash32": bits32, "simhash64": bits64} for line, (bits32, bits64) in zip(lines, results)
        ],
    }
    OUTPUT.write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} cases to {OUTPUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
