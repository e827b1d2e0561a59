"""Benchmark of the EAGLE dataset builder core against a json.loads floor.

Generates a Data Capture set (realistic LLM traffic: OpenAI chat and TGI/LMI text requests,
BASE64 and JSON encodings, streamed responses, duplicates, some junk) in a temporary folder,
then measures, each in its own subprocess so peak memory is measured alone:

* floor   - read every line of the same files and ``json.loads`` it (nothing else);
* builder - ``eagle_dataset_core`` over the same files read as local streams (no AWS), writing
            the converted JSONL to shard files in memory (/dev/shm when there is one: the function
            uploads each shard from memory);
* orjson floor - the same read with ``orjson.loads`` (the parser the function ships with): both
            floors are printed and the builder is compared with each;
* payload floor (extra information) - the floor plus decoding each request/response payload
            (base64 + ``json.loads``): work any converter must do, without the conversion;
* orjson pipeline floor (extra information) - only the C calls a converter with the shipped parsers
            makes (orjson for the line and both payloads, pybase64, ``orjson.dumps`` of the record), with no
            checks, streams, deduplication or counts: the most the builder could reach.

The builder runs as the function does: with orjson when it imports (the asset ships it;
``pip install orjson`` for this benchmark), else the standard-library path; ``--pure`` forces
the standard-library path.

The three measurements run in ``--repeat`` alternating rounds (default 3), each run in a fresh
interpreter; medians are reported, and the ratio is the median of the per-round ratios, so a
shared machine's drift hits floor and builder alike.

Prints records/s, MB/s, wall and CPU seconds and peak RSS for each, the builder/floor throughput
ratio in wall time and in CPU time (the CPU ratio is what the code costs; on a shared machine the
wall ratio also measures who else ran), and the goals (ratio >= 0.5x, builder peak memory < 256 MB).

Usage: python benchmarks/dataset.py [SIZE] [--encoding mixed|base64|json] [--repeat N] [--keep]
       SIZE like 200MB or 1GB (default 1GB). --encoding mixed (default) writes 70% of the events
       BASE64 (Data Capture's default) and 30% JSON (content types listed in JsonContentTypes).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lambda" / "eagle_dataset"))

FILE_BYTES = 8 << 20  # Data Capture rotates files; a few MB each is typical
RATIO_GOAL = 0.5
MEMORY_GOAL_MB = 256
WORDS = [
    "the",
    "model",
    "draft",
    "head",
    "token",
    "verify",
    "speculative",
    "decoding",
    "layer",
    "hidden",
    "state",
    "throughput",
    "latency",
    "endpoint",
    "capture",
    "request",
    "response",
    "batch",
    "adapter",
    "component",
    "inference",
    "cache",
    "prefix",
    "route",
    "session",
    "python",
    "function",
    "return",
    "value",
    "list",
    "dict",
    "string",
    "error",
    "retry",
    "bucket",
    "prefix",
    "object",
    "stream",
    "chunk",
    "line",
    "질문",
    "답변",
    "데이터",
    "모델",
    "추론",
    "속도",
    "日本語",
    "テキスト",
    "über",
    "größe",
    "café",
    "naïve",
]


def parse_size(text: str) -> int:
    units = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "B": 1}
    upper = text.strip().upper()
    for unit, factor in units.items():
        if upper.endswith(unit) and upper[: -len(unit)].strip().replace(".", "", 1).isdigit():
            return int(float(upper[: -len(unit)]) * factor)
    if upper.isdigit():
        return int(upper)
    raise argparse.ArgumentTypeError(f"size {text!r}: use a number of bytes or a value like 200MB or 1GB")


# ---------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def _line(rng: random.Random, event: int, base64_share: float) -> bytes:
    kind = rng.random()
    if kind < 0.80:  # OpenAI chat (LMI / vLLM / TGI Messages API)
        turns = [{"role": "system", "content": _text(rng, 10, 60)}]
        for _ in range(rng.randint(0, 2)):
            turns += [
                {"role": "user", "content": _text(rng, 10, 120)},
                {"role": "assistant", "content": _text(rng, 20, 200)},
            ]
        turns.append({"role": "user", "content": _text(rng, 20, 400)})
        request = {"model": "qwen3-32b", "messages": turns, "max_tokens": 1024, "temperature": 0.7}
        if rng.random() < 0.05:
            tokens = [" " + w for w in _text(rng, 20, 200).split()]
            events = [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in tokens]
            response: bytes | dict = (
                "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            ).encode()
        else:
            response = {
                "id": f"chatcmpl-{event}",
                "object": "chat.completion",
                "created": 1796000000,
                "model": "qwen3-32b",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": _text(rng, 30, 500)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 500, "completion_tokens": 300, "total_tokens": 800},
            }
    else:  # TGI / LMI text generation with a chat template rendered into the prompt
        prompt = (
            f"<|im_start|>system\n{_text(rng, 10, 40)}<|im_end|>\n<|im_start|>user\n{_text(rng, 20, 400)}"
            "<|im_end|>\n<|im_start|>assistant\n"
        )
        request = {"inputs": prompt, "parameters": {"max_new_tokens": 512, "do_sample": True, "top_p": 0.9}}
        response = [{"generated_text": _text(rng, 30, 500)}]
    encoding = "BASE64" if rng.random() < base64_share else "JSON"

    def encode(payload: bytes | dict) -> str:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return base64.b64encode(raw).decode() if encoding == "BASE64" else raw.decode()

    if isinstance(response, bytes) and encoding == "JSON":
        encoding = "BASE64"  # streams are never JSON-listed content types
    record = {
        "captureData": {
            "endpointInput": {
                "observedContentType": "application/json",
                "mode": "INPUT",
                "data": encode(request),
                "encoding": encoding,
            },
            "endpointOutput": {
                "observedContentType": "application/json",
                "mode": "OUTPUT",
                "data": encode(response),
                "encoding": encoding,
            },
        },
        "eventMetadata": {"eventId": str(uuid.UUID(int=rng.getrandbits(128))), "inferenceTime": "2026-11-30T10:15:02Z"},
        "eventVersion": "0",
    }
    return json.dumps(record).encode()


def generate(folder: Path, size: int, base64_share: float, seed: int = 7) -> tuple[int, int, int]:
    rng = random.Random(seed)
    written = lines = files = 0
    recent: list[bytes] = []
    base = folder / "datacapture" / "qwen3-ep" / "AllTraffic" / "2026" / "11" / "30"
    while written < size:
        hour, minute = divmod(files, 60)
        path = base / f"{hour % 24:02d}" / f"{minute:02d}-00-000-{uuid.UUID(int=rng.getrandbits(128))}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        file_bytes = 0
        with path.open("wb") as out:
            while file_bytes < FILE_BYTES and written + file_bytes < size:
                roll = rng.random()
                if roll < 0.02 and recent:
                    line = rng.choice(recent)  # a repeated request (retries, cached prompts)
                elif roll < 0.025:
                    line = bytes(rng.getrandbits(8) for _ in range(rng.randint(10, 200))).replace(b"\n", b" ")  # junk
                else:
                    line = _line(rng, lines, base64_share)
                    if len(recent) < 256:
                        recent.append(line)
                    else:
                        recent[rng.randrange(256)] = line
                out.write(line + b"\n")
                file_bytes += len(line) + 1
                lines += 1
        written += file_bytes
        files += 1
    return written, lines, files


# ---------------------------------------------------------------------------------------------
# Measurements (each runs in a fresh subprocess)
# ---------------------------------------------------------------------------------------------


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / "datacapture").rglob("*.jsonl"))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _lines(files: list[Path]):
    """Every capture line of ``files``, as a file iterator reads them."""
    for path in files:
        with path.open("rb") as handle:
            yield from handle


def _timed(folder: Path, work) -> dict:
    """``work(lines)`` over every capture line of ``folder``, timed (wall and CPU) with its peak memory; ``work``
    returns its own counts. The lines and bytes are counted before the clock starts."""
    files = _files(folder)
    records = size = 0
    for line in _lines(files):
        records += 1
        size += len(line)
    baseline = _rss_mb()
    start, cpu_start = time.perf_counter(), time.process_time()
    counts = work(_lines(files))
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "records": records,
        "bytes": size,
        "baseline_mb": baseline,
        "peak_mb": _rss_mb(),
        **counts,
    }


def _measure_parse(folder: Path, loads, error: type[Exception]) -> dict:
    """Read every capture line and parse it with ``loads`` (a floor: no builder work at all)."""

    def work(lines) -> dict:
        errors = 0
        for line in lines:
            try:
                loads(line)
            except error:
                errors += 1
        return {"errors": errors}

    return _timed(folder, work)


def measure_floor(folder: Path) -> dict:
    return _measure_parse(folder, json.loads, ValueError)


def measure_orjson_floor(folder: Path) -> dict:
    import orjson

    return _measure_parse(folder, orjson.loads, orjson.JSONDecodeError)


def measure_payload_floor(folder: Path) -> dict:
    import binascii

    def work(lines) -> dict:
        for line in lines:
            try:
                capture = json.loads(line)
                for part in (capture["captureData"]["endpointInput"], capture["captureData"]["endpointOutput"]):
                    data = part["data"]
                    if part["encoding"] == "BASE64":
                        data = binascii.a2b_base64(data, strict_mode=True)
                    with contextlib.suppress(ValueError):  # streamed responses are several documents
                        json.loads(data)
            except ValueError:
                pass
        return {}

    return _timed(folder, work)


def measure_pipeline_floor(folder: Path) -> dict:
    """The C calls any converter with the shipped parsers makes, and nothing else: read, ``orjson.loads`` the
    line, decode both payloads (pybase64 for BASE64) and parse each with ``orjson.loads``, write a record of the
    request's messages (or prompt) and the answer with ``orjson.dumps`` plus its newline. No check of shapes,
    no streams (their parse fails and they are dropped), no deduplication, no counts: what the builder could
    reach if everything it does beyond these calls cost nothing."""
    import orjson
    import pybase64

    loads, dumps, decode, error = orjson.loads, orjson.dumps, pybase64.b64decode, orjson.JSONDecodeError

    def work(lines) -> dict:
        written = 0
        for line in lines:
            try:
                capture = loads(line)["captureData"]
                request, response = capture["endpointInput"], capture["endpointOutput"]
                body = loads(decode(request["data"]) if request["encoding"] == "BASE64" else request["data"])
                answer = loads(decode(response["data"]) if response["encoding"] == "BASE64" else response["data"])
            except (error, KeyError, TypeError, ValueError):
                continue
            messages = body.get("messages") if body.__class__ is dict else None
            if messages is None:
                messages = [{"role": "user", "content": body.get("inputs") if body.__class__ is dict else body}]
            written += len(dumps({"messages": [*messages, {"role": "assistant", "content": answer}]}) + b"\n")
        return {"written": written}

    return _timed(folder, work)


def measure_builder(folder: Path, out_folder: Path, pure: bool = False) -> dict:
    import eagle_dataset_core as core

    files = _files(folder)
    baseline = _rss_mb()
    start, cpu_start = time.perf_counter(), time.process_time()
    # one component: every record counts; fast (orjson) unless --pure or orjson is missing
    converter = core.BatchConverter(default_component="base", fast=False if pure else None)
    shard_max = 16 << 20
    # Like the function's _ShardWriter: lines are buffered per component and written as one body per
    # shard (the function uploads each shard with one PutObject).
    buffers: dict[str, list[bytes]] = {}
    sizes: dict[str, int] = {}
    shards: dict[str, int] = {}

    def flush(component: str) -> None:
        target = out_folder / component / f"part-bench-{shards.get(component, 0):05d}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(buffers.pop(component)))
        sizes.pop(component)
        shards[component] = shards.get(component, 0) + 1

    size = 0
    for path in files:
        size += path.stat().st_size
        with path.open("rb") as handle:
            chunks = iter(lambda: handle.read(1 << 20), b"")
            for component, line in converter.convert_lines(core.iter_bounded_line_views(chunks, 8 << 20)):
                buffers.setdefault(component, []).append(line)
                sizes[component] = sizes.get(component, 0) + len(line)
                if sizes[component] >= shard_max:
                    flush(component)
    for component in list(buffers):
        flush(component)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    summary = converter.summary()
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "records": summary["records_in"],
        "bytes": size,
        "baseline_mb": baseline,
        "peak_mb": _rss_mb(),
        "converted": summary["converted"],
        "duplicates": summary["duplicates"],
        "skipped": summary["skipped"],
        "dedup_saturated": summary["dedup_saturated"],
        "fast": converter.fast,
    }


def _output_root() -> str | None:
    """Where the builder's shards go: memory (/dev/shm) when there is one, as the function uploads
    each shard from memory; a disk would add its writeback (and other jobs' I/O) to the builder."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _run_child(kind: str, folder: Path, pure: bool = False) -> dict:
    """One run in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, __file__, "--measure", kind, "--dir", str(folder), *(["--pure"] if pure else [])],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def _median_run(runs: list[dict]) -> dict:
    """The run with the median time (peak memory: the largest seen in any run)."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return {**ordered[len(ordered) // 2], "peak_mb": max(r["peak_mb"] for r in runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("size", nargs="?", default="1GB", type=parse_size, help="capture set size (default 1GB)")
    parser.add_argument(
        "--encoding",
        choices=["mixed", "base64", "json"],
        default="mixed",
        help="payload encoding of the generated events (default mixed: 70%% BASE64, 30%% JSON)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="alternating rounds; medians are shown (default 3)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--pure", action="store_true", help="run the builder on the standard-library path (no orjson)")
    parser.add_argument(
        "--measure", choices=["floor", "orjson", "payload", "pipeline", "builder"], help=argparse.SUPPRESS
    )
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.measure == "floor":
        print(json.dumps(measure_floor(args.dir)))
        return
    if args.measure == "orjson":
        print(json.dumps(measure_orjson_floor(args.dir)))
        return
    if args.measure == "payload":
        print(json.dumps(measure_payload_floor(args.dir)))
        return
    if args.measure == "pipeline":
        print(json.dumps(measure_pipeline_floor(args.dir)))
        return
    if args.measure == "builder":
        out = Path(tempfile.mkdtemp(prefix="eagle-bench-out-", dir=_output_root()))
        try:
            print(json.dumps(measure_builder(args.dir, out, args.pure)))
        finally:
            shutil.rmtree(out, ignore_errors=True)
        return

    folder = Path(tempfile.mkdtemp(prefix="eagle-bench-"))
    try:
        started = time.perf_counter()
        share = {"mixed": 0.7, "base64": 1.0, "json": 0.0}[args.encoding]
        written, lines, files = generate(folder, args.size, share)
        print(
            f"capture set: {written / 1e6:.1f} MB in {files} files, {lines} lines, encoding {args.encoding} "
            f"(generated in {time.perf_counter() - started:.1f} s under {folder}); {args.repeat} alternating rounds, "
            f"medians; shards written under {_output_root() or tempfile.gettempdir()}"
        )
        _run_child("floor", folder)  # warm the page cache so every run reads from memory
        # Rounds alternate floor / payload / builder so a machine that speeds up or slows down during
        # the run affects all three alike; the ratio is the median of the per-round ratios.
        try:
            import orjson  # noqa: F401 - only whether it is there

            kinds: tuple[str, ...] = ("floor", "orjson", "payload", "pipeline", "builder")
        except ImportError:
            kinds = ("floor", "payload", "builder")
            print("orjson is not installed here: no orjson floor, and the builder runs its standard-library path")
        rounds = [{kind: _run_child(kind, folder, args.pure) for kind in kinds} for _ in range(args.repeat)]
        floor = _median_run([r["floor"] for r in rounds])
        payload = _median_run([r["payload"] for r in rounds])
        builder = _median_run([r["builder"] for r in rounds])

        def median_ratio(over: str) -> tuple[float, float, float]:
            values = sorted(
                (r["builder"]["bytes"] / r["builder"]["seconds"]) / (r[over]["bytes"] / r[over]["seconds"])
                for r in rounds
            )
            return values[len(values) // 2], values[0], values[-1]

        ratios = sorted(
            (r["builder"]["bytes"] / r["builder"]["seconds"]) / (r["floor"]["bytes"] / r["floor"]["seconds"])
            for r in rounds
        )
        # CPU time of the same runs: what the code costs, whatever else the machine runs meanwhile
        cpu_ratios = sorted(r["floor"]["cpu_seconds"] / r["builder"]["cpu_seconds"] for r in rounds)

        def row(name: str, r: dict) -> str:
            return (
                f"{name:<26}{r['records'] / r['seconds']:>12,.0f}{r['bytes'] / 1e6 / r['seconds']:>10.1f}"
                f"{r['seconds']:>9.2f}{r['cpu_seconds']:>8.2f}{r['peak_mb']:>12.1f}"
                f"{r['peak_mb'] - r['baseline_mb']:>15.1f}"
            )

        print(
            f"{'':<26}{'records/s':>12}{'MB/s':>10}{'seconds':>9}{'CPU s':>8}{'peak RSS MB':>12}{'above start MB':>15}"
        )
        print(row("floor (read + json.loads)", floor))
        if "orjson" in kinds:
            print(row("orjson floor (read+orjson)", _median_run([r["orjson"] for r in rounds])))
        print(row(f"builder ({'orjson' if builder['fast'] else 'stdlib'} path)", builder))
        print(row("payload floor (info)", payload))
        if "pipeline" in kinds:
            print(row("pipeline floor (info)", _median_run([r["pipeline"] for r in rounds])))
        ratio = ratios[len(ratios) // 2]
        print(
            f"throughput ratio builder/floor: median {ratio:.2f}x (min {ratios[0]:.2f}, max {ratios[-1]:.2f})   goal "
            f">= {RATIO_GOAL}x   {'MET' if ratio >= RATIO_GOAL else 'MISSED'}"
        )
        cpu_ratio = cpu_ratios[len(cpu_ratios) // 2]
        print(
            f"same, CPU time:                 median {cpu_ratio:.2f}x (min {cpu_ratios[0]:.2f}, max "
            f"{cpu_ratios[-1]:.2f})   goal >= {RATIO_GOAL}x   {'MET' if cpu_ratio >= RATIO_GOAL else 'MISSED'}"
        )
        if "orjson" in kinds:
            median, low, high = median_ratio("orjson")
            print(
                f"throughput ratio builder/orjson floor: median {median:.2f}x (min {low:.2f}, max {high:.2f})   "
                "(information)"
            )
        if "pipeline" in kinds:
            pipeline_cpu = sorted(r["floor"]["cpu_seconds"] / r["pipeline"]["cpu_seconds"] for r in rounds)
            share = sorted(r["pipeline"]["cpu_seconds"] / r["builder"]["cpu_seconds"] for r in rounds)
            print(
                f"orjson pipeline floor / floor, CPU time: median {pipeline_cpu[len(pipeline_cpu) // 2]:.2f}x "
                f"(min {pipeline_cpu[0]:.2f}, max {pipeline_cpu[-1]:.2f})   (information: the most the builder could "
                f"reach with the shipped parsers; the pipeline's calls are {share[len(share) // 2]:.0%} of the "
                "builder's CPU)"
            )
        print(
            "for information: builder/payload-floor "
            f"{(builder['bytes'] / builder['seconds']) / (payload['bytes'] / payload['seconds']):.2f}x (the payload "
            "floor only decodes what any converter has to decode)"
        )
        print(
            f"builder peak memory: {builder['peak_mb']:.1f} MB   goal < {MEMORY_GOAL_MB} MB   "
            f"{'MET' if builder['peak_mb'] < MEMORY_GOAL_MB else 'MISSED'}"
        )
        print(
            f"builder counts: records_in={builder['records']} converted={builder['converted']} "
            f"duplicates={builder['duplicates']} skipped={builder['skipped']} "
            f"dedup_saturated={builder['dedup_saturated']}"
        )
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
