"""The impure layer: processes, files, interpreters, the OS. Pure modules never import it."""
