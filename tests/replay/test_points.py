"""One time parser for every verb: ISO 8601 and epoch milliseconds, a hint for epoch seconds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.errors import PointError
from metalog.replay.points import format_time, parse_time
from metalog.replay.shell_tree import iso_zoned

MS = 1_700_000_000_000


@pytest.mark.parametrize("text", [
    "1700000000000", "1700000000000ms", " 1700000000000ms ",  # epoch milliseconds, with or without the suffix
    "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.000Z", "2023-11-14T22:13:20+00:00",
    "2023-11-14T23:13:20+01:00", "2023-11-14T17:13:20-05:00",  # ISO 8601 with an offset
    "2023-11-14T22:13:20", "2023-11-14 22:13:20",  # naive: UTC
    "20231114T221320Z",  # ISO 8601's basic form
])
def test_every_accepted_form_names_the_same_moment(text: str) -> None:
    assert parse_time(text) == MS


def test_milliseconds_and_dates_keep_their_precision() -> None:
    assert parse_time("2023-11-14T22:13:20.123Z") == MS + 123
    assert parse_time("2023-11-14") == MS - (22 * 3600 + 13 * 60 + 20) * 1000
    assert parse_time("0") == 0 and parse_time("999999999") == 999_999_999  # nine digits: plainly milliseconds


def test_ten_digits_look_like_seconds_and_get_a_hint() -> None:
    with pytest.raises(PointError, match=r"1700000000 looks like seconds: did you mean 1700000000000 \(epoch "
                                         r"milliseconds\)\? Write 1700000000ms if you mean milliseconds"):
        parse_time("1700000000")
    assert parse_time("1700000000ms") == 1_700_000_000  # said explicitly: taken as said


@pytest.mark.parametrize("text", ["yesterday", "", "1700000000000s", "2023-13-01T00:00:00Z", "12:00"])
def test_anything_else_is_not_a_time(text: str) -> None:
    with pytest.raises(PointError, match="not a time: .* \\(give ISO 8601 .* or epoch milliseconds"):
        parse_time(text)


def test_format_time_round_trips() -> None:
    assert format_time(MS + 5) == "2023-11-14T22:13:20.005Z"
    assert parse_time(format_time(MS + 5)) == MS + 5
    assert format_time(None) == "-"


INT64 = st.integers(-(2**63), 2**63 - 1)


@given(INT64)
def test_every_int64_timestamp_is_printed_and_reads_back(ms: int) -> None:
    # a batch's maxTimestamp is any int64; a datetime holds the years 1 to 9999: beyond, epoch milliseconds
    text = format_time(ms)
    assert parse_time(text) == ms


@pytest.mark.parametrize(("ms", "text"), [
    (2**63 - 1, "9223372036854775807ms"), (-(2**63), "-9223372036854775808ms"), (2**62, "4611686018427387904ms"),
    (253402300799999, "9999-12-31T23:59:59.999Z"), (253402300800000, "253402300800000ms"),  # the last datetime
    (-62135596800000, "0001-01-01T00:00:00.000Z"), (-62135596800001, "-62135596800001ms"),  # the first
])
def test_times_no_datetime_holds_are_epoch_milliseconds(ms: int, text: str) -> None:
    assert format_time(ms) == text


@given(INT64)
def test_the_shells_provenance_time_never_raises(ms: int) -> None:
    # Kafka's ProvenanceNode prints ISO_ZONED_DATE_TIME; beyond a datetime's years, format_time's milliseconds
    text = iso_zoned(ms)
    assert text.endswith("Z[UTC]") if -62135596800000 <= ms <= 253402300799999 else text == f"{ms}ms"


@pytest.mark.parametrize("text", ["9223372036854775808", "9223372036854775808ms", "-9223372036854775809ms",
                                  "99999999999999999999"])
def test_a_time_beyond_int64_is_refused(text: str) -> None:
    # (it would reach a batch header's int64, or compare with every timestamp as no timestamp can)
    with pytest.raises(PointError, match="no timestamp is that far from 1970 .*int64"):
        parse_time(text)
