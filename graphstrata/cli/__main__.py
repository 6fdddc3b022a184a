from graphstrata.cli import main

main()
