from django.urls import path

from apps.enforcement import allocation_apis, apis, sync_apis

urlpatterns = [
    path("check", apis.CheckApi.as_view(), name="check"),
    path("check/batch", apis.CheckBatchApi.as_view(), name="check-batch"),
    path("customers/<str:customer>/limits", apis.CustomerLimitsApi.as_view(), name="customer-limits"),
    path(
        "customers/<str:customer>/allocations/<str:limit>",
        allocation_apis.AllocationsSetApi.as_view(),
        name="customer-allocations",
    ),
    path("authz", apis.AuthzApi.as_view(), name="authz"),
    path("authz/<path:tail>", apis.AuthzPathApi.as_view(), name="authz-path"),
    path("sync", sync_apis.SyncApi.as_view(), name="sync"),
    path("leases", apis.LeaseAcquireApi.as_view(), name="lease-acquire"),
    path("leases/<str:lease_id>/renew", apis.LeaseRenewApi.as_view(), name="lease-renew"),
    path("leases/<str:lease_id>", apis.LeaseReleaseApi.as_view(), name="lease-release"),
]
