"""torchlet's model zoo: the models of torchvision and transformers as those libraries allocate them."""
