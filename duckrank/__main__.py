from duckrank.cli import main

main()
