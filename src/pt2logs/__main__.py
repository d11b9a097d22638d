from pt2logs.cli import main

main()
