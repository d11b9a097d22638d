"""Reports composed from named queries: summary, diff, ranks, advise, run outcomes in words, timeline export."""
