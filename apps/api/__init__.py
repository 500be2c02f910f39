"""The service API's shared machinery: API-key authentication, the one error shape, JSON in and out, the base view
and the OpenAPI helpers. The endpoints live in the apps that own what they answer (enforcement, reports, toggles);
this package imports none of them.
"""
