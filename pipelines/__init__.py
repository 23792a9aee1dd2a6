"""Built-in task pipelines, registered through the same hook third parties use."""
from zoo.hookspecs import hookimpl


@hookimpl
def register_pipelines(register):
    register("language-modeling", "zoo.pipelines.language_modeling:LanguageModeling",
             config="zoo.pipelines.language_modeling:LanguageModelingConfig",
             description="next-token prediction on text; reports loss, perplexity, bits per character")
    register("classification", "zoo.pipelines.classification:Classification",
             config="zoo.pipelines.classification:ClassificationConfig",
             description="one label per text; reports accuracy, macro F1, per-class "
                         "precision/recall/F1 and the confusion matrix")
    register("next-item", "zoo.pipelines.next_item:NextItem",
             config="zoo.pipelines.next_item:NextItemConfig",
             description="predict the next token of a context; reports accuracy (per family "
                         "where rows name one) and loss")
