"""Code the tests share: builders of data, runs and models, and the outcome bounds. No test
module imports another; what two of them need lives here."""
