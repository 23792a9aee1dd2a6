"""Built-in task pipelines, registered through the same hook third parties use."""
from zoo.hookspecs import hookimpl


@hookimpl
def register_pipelines(register):
    register("language-modeling", "zoo.pipelines.language_modeling:LanguageModeling",
             config="zoo.pipelines.language_modeling:LanguageModelingConfig",
             description="next-token prediction on text; reports loss, perplexity, bits per character")
    register("next-item", "zoo.pipelines.next_item:NextItem",
             config="zoo.pipelines.next_item:NextItemConfig",
             description="predict the next token of a context; reports accuracy (per family "
                         "where rows name one) and loss")
