"""TidyUP: a robot and a person tidy a household (the CE-CM paper's first domain)."""
