from envforge.cli import main

raise SystemExit(main())
