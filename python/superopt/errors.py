"""errors.py: the exception every superopt call raises on failure."""


class SuperoptError(Exception):
    """A failure reported by libsuperopt: code is the C API's api_code (1
    usage, 2 bad input, 3 internal, 4 unsupported here), message its text
    (file:line:col where there is one)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message
