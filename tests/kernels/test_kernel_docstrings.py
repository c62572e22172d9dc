"""Each kernel module's first line names its NNAPI operations with their codes ("ADD (NNAPI OperationType 0)");
fifteen of them had drifted (TILE said 95, LOG_SOFTMAX 72, the REDUCE family 96..101), so the codes are checked
against `OperationType`."""

from __future__ import annotations

import re
from pathlib import Path

from nnconv.nnapi.enums import OperationType

KERNELS = Path(__file__).resolve().parents[2] / "nnconv" / "runtime" / "kernels"
HEADLINE = re.compile(r'"""([A-Z0-9_ /]+?) \(NNAPI OperationType ([0-9 /]+)')


def test_kernel_headlines_give_the_right_operation_codes():
    checked, wrong = 0, []
    for path in sorted(KERNELS.glob("*.py")):
        m = HEADLINE.match(path.read_text(encoding="utf-8").split("\n", 1)[0])
        if m is None:
            continue
        names = [n.strip() for n in m.group(1).split("/")]
        codes = [int(c) for c in m.group(2).split("/")]
        assert len(names) == len(codes), path.name
        for name, code in zip(names, codes):
            checked += 1
            if OperationType[name].value != code:
                wrong.append(f"{path.name}: {name} is {OperationType[name].value}, the docstring says {code}")
    assert checked > 60 and not wrong, "\n".join(wrong)
