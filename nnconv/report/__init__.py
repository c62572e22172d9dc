"""Reports about models: the `check` compatibility report and the `ops` table, analysis apart from rendering."""
