"""The domain: what memory is and the rules it obeys, free of any I/O technology."""
