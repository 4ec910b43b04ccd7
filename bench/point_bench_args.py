"""The arguments the point-cloud benchmarks share (bench/points_*.py): sizes,
dimensions, dtypes, rounds and the two iteration counts whose time difference
gives one iteration."""


def add_point_arguments(parser, n=100000, dims="3", dtypes="float64,float32", rounds=3, lo=1, hi=2):
    parser.add_argument("--n", type=int, default=n, help="points per cloud")
    parser.add_argument("--dims", default=dims)
    parser.add_argument("--dtypes", default=dtypes)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--lo", type=int, default=lo)
    parser.add_argument("--hi", type=int, default=hi)
    return parser
