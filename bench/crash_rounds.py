r"""Crash rounds, many of them (bench/README.md, "Crash rounds"; docs/replication.md): eight writers against
`agenda run --replica --ack-after-replication`, the service and its Litestream killed with SIGKILL at a random
moment, the replica restored and held to what was promised (tests/crash_rounds.py says what). Prints each
round and, for each --cores setting, how many restores failed.

    .venv/bin/python bench/crash_rounds.py                          # 50 rounds each way: about 15 minutes
    .venv/bin/python bench/crash_rounds.py --rounds 10 --cores one
    .venv/bin/python bench/crash_rounds.py --agenda /path/to/an/older/checkout   # the rate before a change

One round in --down-every (default 5) first keeps Litestream down for a few seconds, so that the service
checkpoints by itself meanwhile; one in --damaged-every (default 7) is a damaged-file round: the replica
compacted, its newest level-1 file damaged, and the restore must still give the primary's newest state whole,
with no loss said (tests/crash_rounds.py, `damaged_file_round`). Bounded: --rounds a setting, each round a few seconds of writing, to
127.0.0.1 only; the processes it starts are stopped by their id; its files are in one temporary folder.
"""

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import crash_rounds  # noqa: E402  (tests/crash_rounds.py: the round itself)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50, help="rounds for each --cores setting")
    parser.add_argument("--cores", nargs="+", default=["one", "all"], choices=["one", "all"])
    parser.add_argument("--down-every", type=int, default=5, help="one round in N keeps Litestream down first (0: none)")
    parser.add_argument("--damaged-every", type=int, default=7,
                        help="one round in N damages a compacted file of the replica (0: none)")
    parser.add_argument("--agenda", default=str(Path(__file__).resolve().parent.parent),
                        help="the checkout whose agenda.py runs (default: this one)")
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="agenda-crash-") as folder:
        for cores in options.cores:
            failed, acknowledged, started = 0, 0, time.monotonic()
            for number in range(1, options.rounds + 1):
                damaged = bool(options.damaged_every) and number % options.damaged_every == 0
                down = not damaged and bool(options.down_every) and number % options.down_every == 0
                here = Path(folder) / f"{cores}-{number}"
                here.mkdir()
                outcome = crash_rounds.damaged_file_round(options.agenda, here, rng, cores=cores) if damaged else \
                    crash_rounds.crash_round(options.agenda, here, rng, cores=cores, litestream_down=down)
                failed += bool(outcome.problems)
                acknowledged += outcome.acknowledged
                kind = " (Litestream down first)" if down else " (a compacted file damaged)" if damaged else ""
                print(f"--cores {cores} round {number}{kind}: "
                      f"{outcome.acknowledged} acknowledged, restore events {outcome.restored_events} of "
                      f"{outcome.primary_events}, {outcome.checkpoints_alone} checkpoints by the service: "
                      f"{'; '.join(outcome.problems) or 'whole'}", flush=True)
            print(f"--cores {cores}: {failed} of {options.rounds} restores failed ({acknowledged} changes "
                  f"acknowledged, {time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
