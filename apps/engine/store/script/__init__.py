"""The check script as Redis runs it: assembled from lib.lua, the registry's fragments and check.lua with a line
map (assembly.py), the layout of its arguments (check_fields.py), a call encoded (args.py) and a recorded one read
back by name (recorded_call.py)."""
