"""Settings of the property-based suite (hypothesis): bounded and derandomized, so CI runs the
same examples every time, in a few minutes. TWIST_PROPERTY_SCALE multiplies every budget for a
longer local hunt (e.g. TWIST_PROPERTY_SCALE=10)."""

from hypothesis import HealthCheck, settings
from mutations import budget

settings.register_profile(
    "twist-ci",
    derandomize=True,  # a fixed seed: the same examples on every machine
    database=None,  # no example database on disk: nothing but the seed decides
    deadline=None,  # tests never assert time; a loaded CI machine is slow
    max_examples=budget(100),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.load_profile("twist-ci")
