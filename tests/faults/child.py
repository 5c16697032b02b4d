"""``python -m tests.faults.child KIND WAREHOUSE K MODE``: run KIND's statement on WAREHOUSE and
end the process (``os._exit``) at operation K (MODE ``exit_before`` / ``exit_after``)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.faults.faulty_io import FaultPlan, FaultyFileIO
from tests.faults.kinds import KINDS
from tests.faults.sweep import open_table


def main(argv: list[str]) -> int:
    kind, warehouse, k, mode = KINDS[argv[0]], Path(argv[1]), int(argv[2]), argv[3]
    plan = FaultPlan(k, mode)
    t = open_table(warehouse, FaultyFileIO(plan))
    plan.arm()
    kind.run(t)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
