"""The scripted model the tests run the frameworks against: the one the
package ships (`toolpolicy.testing`), under the name the tests use."""

from toolpolicy.testing import Script, ScriptedModel as ModelServer, Turn, completion

__all__ = ["ModelServer", "Script", "Turn", "completion"]
