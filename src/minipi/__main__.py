from minipi.cli.main import main

main()
