"""Translation: its settings (``config``), corpora and tokenizer (``data``), the task the
engine trains (``task``), BLEU validation (``validate``), loading a trained model or an
ensemble (``loading``) and choosing its decoding on validation (``tune``)."""
