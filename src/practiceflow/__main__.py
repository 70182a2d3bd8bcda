"""``python -m practiceflow`` runs the CLI."""

from practiceflow.cli import main

main()
