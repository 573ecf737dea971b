from feeds.cli import main

main()
