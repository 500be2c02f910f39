from django.urls import path

from apps.enforcement.counters import apis as counter_apis
from apps.enforcement.decisions import apis as decision_apis
from apps.enforcement.gateway import apis as gateway_apis
from apps.enforcement.hybrid import sync_apis
from apps.enforcement.leases import allocation_apis
from apps.enforcement.leases import apis as lease_apis

urlpatterns = [
    path("check", decision_apis.CheckApi.as_view(), name="check"),
    path("check/batch", decision_apis.CheckBatchApi.as_view(), name="check-batch"),
    path("customers/<str:customer>/limits", counter_apis.CustomerLimitsApi.as_view(), name="customer-limits"),
    path(
        "customers/<str:customer>/allocations/<str:limit>",
        allocation_apis.AllocationsSetApi.as_view(),
        name="customer-allocations",
    ),
    path("authz", gateway_apis.AuthzApi.as_view(), name="authz"),
    path("authz/<path:tail>", gateway_apis.AuthzPathApi.as_view(), name="authz-path"),
    path("sync", sync_apis.SyncApi.as_view(), name="sync"),
    path("leases", lease_apis.LeaseAcquireApi.as_view(), name="lease-acquire"),
    path("leases/<str:lease_id>/renew", lease_apis.LeaseRenewApi.as_view(), name="lease-renew"),
    path("leases/<str:lease_id>", lease_apis.LeaseReleaseApi.as_view(), name="lease-release"),
]
