"""Tools: the command line, add-task, throw-away workspaces."""
