"""The one figure style (seaborn theme, palettes, the host stamp): what report stages draw with.
Its own package, so that a measuring stage, which draws nothing, does not depend on it (dvc.yaml
lists code by package folder)."""
