from zoo.cli.main import main

if __name__ == "__main__":  # `python -m zoo`; importing this module (docs tools do) runs nothing
    raise SystemExit(main())
