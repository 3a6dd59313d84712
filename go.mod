module github.com/heureka/heureka

go 1.26.8
