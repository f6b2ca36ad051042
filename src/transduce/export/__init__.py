"""Our trained models in other runtimes: CTranslate2 (fast serving) and Hugging Face Marian."""
