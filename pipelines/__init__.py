"""Built-in task pipelines, registered through the same hook third parties use."""
from zoo.hookspecs import hookimpl


@hookimpl
def register_pipelines(register):
    register("language-modeling", "zoo.pipelines.language_modeling:LanguageModeling",
             config="zoo.pipelines.language_modeling:LanguageModelingConfig",
             description="next-token prediction on text; reports loss, perplexity, bits per character")
