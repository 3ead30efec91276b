"""report.html: a bundle's human view, derived only from its signed documents (issue 34)."""
