"""Built-in models; each module registers its models with gpu_service.registry when imported."""
