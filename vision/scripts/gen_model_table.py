"""Rewrites the table of classification weights in vision/README.md from the weights' meta
(between the `models-table` markers), as TorchVision's documentation tables are made.

    PYTHONPATH=core-py/python:vision python vision/scripts/gen_model_table.py
"""
import os
import re

import embervision.models as M

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
START, END = "<!-- models-table:start -->", "<!-- models-table:end -->"


def table():
    rows = ["| Weight | Acc@1 | Acc@5 | Params | GFLOPS | File size (MB) | Recipe |",
            "|---|---:|---:|---:|---:|---:|---|"]
    seen = set()
    for name in M.list_models():
        enum_cls = M.get_model_weights(name)
        if enum_cls in seen:
            continue
        seen.add(enum_cls)
        for w in enum_cls:
            meta = w.meta
            metrics = meta.get("_metrics", {}).get("ImageNet-1K")
            if not metrics or metrics["acc@1"] != metrics["acc@1"]:  # none, or NaN (features only)
                continue
            rows.append(
                f"| `{w!r}` | {metrics['acc@1']:.3f} | {metrics['acc@5']:.3f} | {meta['num_params'] / 1e6:.1f}M "
                f"| {meta['_ops']:.2f} | {meta['_file_size']:.1f} | [link]({meta['recipe']}) |")
    return "\n".join(rows)


def main():
    text = open(README).read()
    block = f"{START}\n{table()}\n{END}"
    if START in text:
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n### Classification weights\n\n" + block + "\n"
    with open(README, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
