#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into tests/fuzz/corpus/<target>/.

Seeds are small real inputs: tiny IDX files (the fuzz_idx_reader input is one
mode byte, then the file; see tests/fuzz/fuzz_idx_reader.cpp), trimmed copies
of the test and H200 reports, typical command lines (one argument per line)
and model picks. Rerun after changing the formats; the output is committed.
"""
import gzip
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def idx(dims, payload=None):
    head = bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)
    n = 1
    for d in dims:
        n *= d
    return head + (payload if payload is not None else bytes(i % 251 for i in range(n)))


def idx_seeds():
    # Mode byte: ndim-1 in bits 0-1, 28x28 items in bit 2, gzip the rest in bit 3.
    labels = idx([6])
    images = idx([2, 28, 28])
    small = idx([3, 4, 5])
    put("idx_reader", "labels_raw", bytes([0]) + labels)
    put("idx_reader", "images_raw", bytes([2 | 4]) + images)
    put("idx_reader", "small_raw", bytes([2]) + small)
    put("idx_reader", "small_raw_via_gzip", bytes([2 | 8]) + small)
    # Already gzipped files, written as they are: zlib reads them as gzip.
    put("idx_reader", "labels_gz", bytes([0]) + gzip.compress(labels, mtime=0))
    put("idx_reader", "images_gz", bytes([2 | 4]) + gzip.compress(images, mtime=0))
    put("idx_reader", "truncated_raw", bytes([2]) + small[:-3])
    put("idx_reader", "truncated_gz", bytes([2]) + gzip.compress(small, mtime=0)[:-6])
    put("idx_reader", "empty_items", bytes([2]) + idx([0, 7, 9]))
    put("idx_reader", "empty_items_overflowing", bytes([2]) + idx([0, 0xFFFFFFFF, 0xFFFFFFFF], b""))
    # A gzip file is a series of members; bytes after the last that start none are refused.
    half = len(small) // 2
    put("idx_reader", "gz_two_members", bytes([2]) + gzip.compress(small[:half], mtime=0) +
        gzip.compress(small[half:], mtime=0))
    put("idx_reader", "gz_trailing_garbage", bytes([2]) + gzip.compress(small, mtime=0) + b"junk")


def trimmed_bench_report(path, cases):
    j = json.load(open(os.path.join(ROOT, path)))
    names = []
    for b in j["benchmarks"]:
        if b["run_name"] not in names:
            names.append(b["run_name"])
    keep = set(names[:cases])
    j["benchmarks"] = [b for b in j["benchmarks"] if b["run_name"] in keep]
    return json.dumps(j, indent=1)


def trimmed_tta_report(path):
    j = json.load(open(os.path.join(ROOT, path)))
    j["benchmarks"] = [b for b in j["benchmarks"] if b.get("repetition_index", 0) < 2][:3]
    runs = j["tta"]["runs"][:2]
    for r in runs:
        r["epochs"] = r["epochs"][:2]
    j["tta"]["runs"] = runs
    return json.dumps(j, indent=1)


def json_seeds():
    put("json_report", "report_small_1case.json", trimmed_bench_report("tests/golden/report_small.json", 1))
    put("json_report", "report_small_b_2cases.json", trimmed_bench_report("tests/golden/report_small_b.json", 2))
    put("json_report", "tta_cnn.json", trimmed_tta_report("reports/h200/tta/tta_cnn.json"))
    put("json_report", "tta_resnet18.json", trimmed_tta_report("reports/h200/tta/tta_resnet18.json"))
    put("json_report", "google_benchmark_only.json", '{"context": {"date": "x"}, "benchmarks": []}')


def lines(*args):
    return "\n".join(args) + "\n"


def cli_seeds():
    put("cli_args", "typical", lines("--name", "a", "--count=3", "--rate", "0.25", "--flag", "pos"))
    put("cli_args", "errors", lines("--count", "x", "--", "--rate=inf"))
    put("cli_args", "lists", lines("--name", "a,b,,a", "--count", "2"))
    put("bench_options", "default", lines("run"))
    put("bench_options", "gate_sweep", lines("--device", "cpu", "--model", "cnn,mlp", "--batch", "32",
                                             "--warmup", "1", "--iters", "2", "--repetitions", "2",
                                             "--width", "0.25", "--json", "out.json"))
    put("bench_options", "modes", lines("--device=cpu", "--mode", "eager,full-capture", "--ranks", "1,2",
                                        "--variants", "train_base,val_last", "--optimizer", "lars",
                                        "--bn-sync", "running", "--bucket-mb", "0", "--split-steps"))
    put("bench_options", "repeats", lines("--device", "cpu", "--batch", "8,08", "--mode", "all,eager",
                                          "--model", "mlp,mlp", "--variants", "val_last,"))
    put("bench_options", "per_gpu", lines("--device", "cpu", "--batch-per-gpu", "64,256", "--precision", "fp32",
                                          "--image-size", "32", "--model", "resnet18"))
    put("train_flags", "mlp", lines("--model", "mlp", "--epochs", "1", "--batch", "4"))
    put("train_flags", "cnn_aug", lines("--model", "cnn", "--flip", "--translate", "2", "--cutout", "4",
                                        "--tta", "flip", "--amp", "--optimizer", "sgd", "--lr", "0.4",
                                        "--schedule", "cosine", "--warmup", "0.2"))
    put("train_flags", "resnet_small", lines("--model", "resnet18", "--image-size", "16", "--width", "0.125",
                                             "--ranks", "2", "--bn-sync", "running", "--bucket-mb", "1",
                                             "--lowres-epochs", "1", "--lowres-size", "8", "--epochs", "2",
                                             "--train-subset", "4", "--val-subset", "2"))
    put("train_flags", "datadir", lines("--data-dir", "/nonexistent", "--no-shuffle", "--seed", "7"))
    # Found by a 300 s run: the appended --synthetic became --val-subset's value,
    # so the real data was read and padded to 224x224 (11 s under ASan).
    put("train_flags", "value_flag_last", lines("--model", "resnet18", "--val-subset"))


def conv_plans_seeds():
    place = {"device": "NVIDIA H200", "compute_capability": "9.0", "cudnn_version": 91900,
             "deterministic": True}
    key = {"dir": "fwd", "dtype": "f16", "n": 256, "h": 14, "w": 14, "c": 64, "k": 64, "r": 3,
           "stride": 1, "pad": 1}
    legacy = dict(key, legacy_algo=1, candidate=-1, engine=-1, ms=-1, legacy_ms=-1)
    timed = dict(key, dir="bwd_data", legacy_algo=1, candidate=3, engine=67, ms=0.0114, legacy_ms=0.0172)
    put("conv_plans", "two_plans.json", json.dumps({"format": "tr-conv-plans", "version": 1, "place": place,
                                                    "plans": [legacy, timed]}, indent=1))
    put("conv_plans", "empty.json", json.dumps({"format": "tr-conv-plans", "version": 1, "place": None,
                                                "plans": []}))


def model_seeds():
    # FuzzedDataProvider reads integers from the end of the input, bools and
    # strings from the front; these are just a spread of starting points.
    for i in range(6):
        put("model_registry", f"pick{i}", bytes([i, 64, 28, 3, 10] * 4))


def token_shard(tokens, magic=20240520, version=1, count=None):
    header = [0] * 256
    header[0], header[1], header[2] = magic, version, len(tokens) if count is None else count
    return struct.pack("<256i", *header) + struct.pack("<%dH" % len(tokens), *tokens)


def token_shard_seeds():
    # Mode byte: the vocabulary, by index into {257, 50257, 65536, 3}.
    put("token_shard", "bytes_doc", bytes([0]) + token_shard([256] + list(b"hello\n")))
    put("token_shard", "gpt2", bytes([1]) + token_shard([50256, 15496, 11, 995, 0]))
    put("token_shard", "all_u16", bytes([2]) + token_shard([0, 1, 255, 256, 65535]))
    put("token_shard", "out_of_vocab", bytes([3]) + token_shard([0, 1, 2, 3]))
    put("token_shard", "empty", bytes([0]) + token_shard([]))
    put("token_shard", "truncated", bytes([0]) + token_shard([1, 2, 3], count=5))
    put("token_shard", "llama3", bytes([2]) + token_shard([1], magic=20240801, version=7))


def text_manifest_seeds():
    def split(name, docs, tokens):
        return {"documents": docs, "bytes": tokens - docs, "tokens": tokens,
                "shards": [{"file": "%s_000000.bin" % name, "tokens": tokens, "fnv1a64": "0123456789abcdef"}]}
    manifest = {
        "format": "tr-text-shards", "version": 1,
        "source": {"corpus": "linux-doc", "package": "linux-doc-6.1", "package_version": "6.1.192-3",
                   "dir": "/usr/share/doc/linux-doc-6.1/html/_sources", "suffix": ".rst.txt",
                   "excluded": ["translations"], "documents": 3, "bytes": 40, "fnv1a64": "69b03e23ad1ec591"},
        "tokenizer": {"kind": "bytes", "vocab": 257, "document_token": 256},
        "split": {"rule": "fnv1a64(name) % 1000 < val_permille", "val_permille": 50},
        "shard_tokens": 100000000,
        "splits": {"train": split("train", 2, 30), "val": split("val", 1, 13)}}
    put("text_manifest", "linux_doc", json.dumps(manifest, indent=2))
    manifest["source"].update(corpus="dir", package="", package_version=None, excluded=[])
    put("text_manifest", "dir", json.dumps(manifest))


if __name__ == "__main__":
    idx_seeds()
    json_seeds()
    cli_seeds()
    conv_plans_seeds()
    model_seeds()
    token_shard_seeds()
    text_manifest_seeds()
