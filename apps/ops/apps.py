from django.apps import AppConfig
from django.conf import settings


def _warm_up_asked(counters: list[str]) -> None:
    from apps.ops.tasks import warm_counters_task  # when first asked: starting a process imports no job

    warm_counters_task.delay(counters)


class OpsConfig(AppConfig):
    name = "apps.ops"

    def ready(self) -> None:
        # A check that needs a seed asks for a warm-up (apps/enforcement/counters/warm_up.py), which runs as this
        # app's job: wired here because enforcement does not import ops. Not with the embedded folder broker (make
        # run, tests): there the beat job's run every few seconds is the trigger, and no message is left behind.
        if settings.EMBEDDED_BROKER:
            return
        from apps.enforcement.counters.warm_trigger import warm_up_trigger_set

        warm_up_trigger_set(_warm_up_asked)
