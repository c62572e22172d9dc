"""Devices: what a given phone's NNAPI drivers take. Device profiles (`profile.py`, shipped ones in
`data/`), `check --device`'s per-op verdicts and partition plan for one device (`device_check.py`), and the
probe that asks a phone's drivers themselves (`probe.py`). docs/devices.md describes them."""
