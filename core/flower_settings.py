"""Settings of the Flower dashboard (reelgen/flower.py starts it): nested in reelgen's Settings as the field
`flower`, so the environment reaches them as `REELGEN_FLOWER__BASIC_AUTH=...`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class FlowerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    basic_auth: SecretStr | None = Field(
        default=None, description="user:password[,user:password...]; passwords may not contain ','"
    )
    allow_unauthenticated: bool = False
    address: str = "0.0.0.0"
    port: int = Field(default=5555, ge=0, le=65535)
    url_prefix: str = ""
    max_tasks: int = Field(default=10_000, ge=100, description="tasks Flower keeps in memory")
    purge_offline_workers_s: int | None = Field(
        default=600, ge=1, description="forget workers offline this long (pods come and go)"
    )

    @field_validator("basic_auth")
    @classmethod
    def _check_auth(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        for pair in value.get_secret_value().split(","):
            user, sep, password = pair.partition(":")
            if not (user and sep and password):
                # never echo the value: it holds passwords
                raise ValueError("basic_auth must be user:password pairs separated by ',' (both non-empty)")
        return value
