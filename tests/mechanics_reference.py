"""What the tests of models from sympy.physics.mechanics expect besides SymPy's own solution
(pyint.models.sympy_tutorials.sympy_reference): the orders of the methods on an unconstrained ODE.
"""

#: Orders on an unconstrained ODE: the claimed orders of the Gauss-Legendre composition and of the
#: Galerkin-Lobatto variational methods are their orders under constraints; without constraints the
#: kicks vanish and symplectic_gl is the 2-stage Gauss-Legendre method (order 2s = 4: Hairer, Lubich,
#: Wanner, Geometric Numerical Integration, II.1.3), galerkin_s<s> the Lobatto IIIA-IIIB pair with s + 1
#: nodes (order 2s: Marsden & West 2001, Acta Numerica, 2.6; seed 004's s + 1 / s is the order reduction by
#: the nonholonomic constraint). Measured on the rolling disc: 4.00; 1.98, 4.00, 5.96, 7.96.
UNCONSTRAINED_ORDER = {"symplectic_gl": 4, "galerkin_s1": 2, "galerkin_s2": 4, "galerkin_s3": 6, "galerkin_s4": 8}
