"""Demo data shipped inside Isoscope (``importlib.resources.files("isoscope.assets")``); see README.md."""
