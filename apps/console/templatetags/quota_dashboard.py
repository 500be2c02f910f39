"""{% quota_dashboard %}: the operators' dashboard, rendered on the admin index (templates/admin/index.html)."""

from typing import Any

from django import template

from apps.console.charts import Bar, bar_chart_svg
from apps.console.dashboard import NOW_WINDOW, dashboard_build
from apps.usage.vocabulary import BY_NAME

register = template.Library()

DENIED_COLOR = BY_NAME["denied"].colour
# Who may see it: the dashboard names customers and their usage.
VIEW_PERMISSION = "customers.view_customer"


@register.inclusion_tag("console/dashboard.html", takes_context=True)
def quota_dashboard(context: template.Context) -> dict[str, Any]:
    request = context.get("request")
    if request is None or not request.user.has_perm(VIEW_PERMISSION):
        return {"allowed": False}
    board = dashboard_build()
    bars = [Bar(row.customer, row.throttled, f"{row.denied_share:.0%} of its checks") for row in board.throttled_now]
    return {
        "allowed": True,
        "board": board,
        "now_minutes": int(NOW_WINDOW.total_seconds() // 60),
        "throttled_chart": bar_chart_svg(
            title="Most throttled customers now", bars=bars, color=DENIED_COLOR, value_label="checks denied"
        ),
    }
