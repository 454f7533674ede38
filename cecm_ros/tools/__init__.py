"""Command-line tools: cecm, the demo graph, recording and re-estimation."""
