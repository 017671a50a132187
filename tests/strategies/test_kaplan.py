"""Kaplan's sniper: it waits at its extreme and takes a bargain, or anything acceptable late."""

from __future__ import annotations


def test_it_waits_then_takes_a_bargain(versus_test, expected_classifier):
    """A Seller on levels 1..11 waits at 11; the linear Buyer climbs 2 a round; 6 lies in
    the better half of the Seller's range (2 (6 - 1) >= 11 - 1), so it takes it."""
    versus_test("kaplan", "linear", expected=[
        ("seller", 11), ("buyer", 2), ("seller", 11), ("buyer", 4), ("seller", 11),
        ("buyer", 6), ("seller", "accept")])
    expected_classifier("kaplan")


def test_late_it_takes_what_is_no_bargain(versus_test):
    """A Seller on 5..11 facing a Buyer who cannot pay above 6 never sees a bargain (8 and
    up): at round 7 it still waits on a 5; at round 8 of 10 (the last fifth) it takes it."""
    versus_test("kaplan", "linear", rounds=10, seller_range=(5, 11), buyer_range=(1, 6),
                expected=[
                    ("seller", 11), ("buyer", 1), ("seller", 11), ("buyer", 1),
                    ("seller", 11), ("buyer", 2), ("seller", 11), ("buyer", 2),
                    ("seller", 11), ("buyer", 3), ("seller", 11), ("buyer", 4),
                    ("seller", 11), ("buyer", 4), ("seller", 11), ("buyer", 5),
                    ("seller", 11), ("buyer", 5), ("seller", "accept")])
