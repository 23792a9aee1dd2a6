from zoo.cli.main import main

raise SystemExit(main())
