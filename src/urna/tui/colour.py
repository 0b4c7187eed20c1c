"""How many colours the TUI uses: as the terminal allows, none under NO_COLOR, URNA_COLOR wins."""

from __future__ import annotations

from collections.abc import Mapping

# URNA_COLOR value -> textual's colour system (TEXTUAL_COLOR_SYSTEM); "none" means NO_COLOR.
COLOR_SYSTEMS = {"truecolor": "truecolor", "256": "256", "none": None}


def colour_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables to set before textual is imported so it honours URNA_COLOR / NO_COLOR."""
    choice = env.get("URNA_COLOR", "").strip().lower()
    if choice not in COLOR_SYSTEMS:
        return {}  # unset or unknown: textual detects the terminal and honours NO_COLOR itself
    system = COLOR_SYSTEMS[choice]
    if system is None:
        return {"NO_COLOR": "1"}
    return {"TEXTUAL_COLOR_SYSTEM": system}
