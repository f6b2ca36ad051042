"""Text with the encoder on its own: the settings (``config``), the files read and encoded
(``data``) and the task the engine trains (``task``). From Python:
:class:`transduce.api.text.TextModel`."""
