"""Inside the model: parameter budgets, the input embedding's spectrum, the pooling explorer."""
