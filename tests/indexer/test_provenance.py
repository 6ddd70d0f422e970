"""The site record an index keeps: one fingerprint for one set of pages, whatever the
order, and a record that no longer matches its fingerprint is refused."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from indexer.provenance import SiteRecord, digest

names = st.text(st.sampled_from("abc/.-_"), min_size=1, max_size=8).map(lambda s: s + ".md")
pages = st.dictionaries(names, st.binary(max_size=16).map(digest), min_size=1, max_size=8)


@given(pages, st.randoms())
def test_the_fingerprint_is_one_per_set_of_pages_in_any_order(
    found: dict[str, str], shuffle: object
) -> None:
    items = list(found.items())
    shuffle.shuffle(items)  # type: ignore[attr-defined]
    a = SiteRecord("site", found, (), "file")
    b = SiteRecord("renamed", dict(items), ("x/**",), "pretty")
    assert a.fingerprint == b.fingerprint  # the pages alone, not the folder or settings


@given(pages, st.data())
def test_any_edited_added_or_removed_page_changes_the_fingerprint(
    found: dict[str, str], data: st.DataObject
) -> None:
    before = SiteRecord("site", found, (), "file")
    name = data.draw(st.sampled_from(sorted(found)))
    edited = {**found, name: digest(found[name].encode())}
    removed = {k: v for k, v in found.items() if k != name}
    added = {**found, "new/" + name: found[name]}
    for after in (edited, removed, added):
        assert SiteRecord("site", after, (), "file").fingerprint != before.fingerprint


@given(pages)
def test_a_record_round_trips_and_a_tampered_one_is_refused(found: dict[str, str]) -> None:
    record = SiteRecord("site", found, ("drafts/**",), "file")
    raw = record.as_json()
    assert SiteRecord.from_json(raw) == record
    name = sorted(found)[0]
    tampered = {**raw, "pages": {**raw["pages"], name: digest(b"other" + name.encode())}}
    try:
        SiteRecord.from_json(tampered)
    except ValueError as exc:
        assert "fingerprint" in str(exc)
    else:
        raise AssertionError("a record that does not match its fingerprint was accepted")
