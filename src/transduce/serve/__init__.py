"""`transduce serve`: the HTTP server and its web page."""
