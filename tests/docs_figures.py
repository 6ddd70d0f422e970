"""Print the figures the docs quote, as the code computes them now (`python -m
tests.docs_figures`): after a change to pricing, metering or the defaults, paste these into
README.md, docs/local.md and docs/operating.md; tests/test_docs.py checks each one."""

from __future__ import annotations

from local.commands.chat_demo_serve import local_settings
from local.commands.limits import admitted, summary
from ops import verify
from ops.render import usd
from steps.lib.money.pricing import largest_reserve_micros


def main() -> None:
    s = local_settings()
    reserve = largest_reserve_micros(s)
    small = admitted(
        local_settings(visitor_message_limit=3, daily_ceiling_usd="0.05", visitor_cost_share="0.5")
    )
    print(
        "README, serve --visitor-message-limit 3 --daily-ceiling-usd 0.05 --visitor-cost-share 0.5:"
    )
    print(f"  {small['day']} worst-case messages a day, {small['visitor']} per visitor")
    print("docs/local.md, chatguard serve:")
    print("  " + summary(s)[0])
    print("docs/local.md, chatguard serve --daily-ceiling-usd 0.03:")
    print("  " + summary(local_settings(daily_ceiling_usd="0.03"))[1])
    print("docs/operating.md, spend and verify:")
    print(f"  largest reserve one message can make: {usd(reserve)}")
    print(f"  24 settled ({usd(24 * reserve)} reserved")
    print("  " + verify.spend_notice(verify.Target("", "", 0, 0.0, reserve)))


if __name__ == "__main__":
    main()
